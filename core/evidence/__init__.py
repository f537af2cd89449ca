"""What commands showed: capture, redaction, summaries, and encrypted storage."""

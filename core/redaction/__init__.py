"""Secrets out of text: the redaction rules, the streaming redactor, free text made safe."""

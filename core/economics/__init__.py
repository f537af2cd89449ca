"""What a checkpoint is worth: the break-even model, the checkpoint policy, the store's metrics."""

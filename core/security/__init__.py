"""Keys and what they protect: encryption at rest, task data keys, identities, fingerprints."""

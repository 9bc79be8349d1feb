"""Checkpoints: the Arrow tables and their atomic generations (arrow), plain encodings of
messages (codec), and when to save and how to resume (session)."""

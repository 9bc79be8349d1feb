"""Checkpoints: the Arrow tables and their atomic generations (arrow), writing and reading
a generation (write, read), plain encodings of messages (codec), and when to save and how
to resume (session)."""

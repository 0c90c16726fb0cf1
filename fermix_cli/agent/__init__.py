"""The model loop: providers, the loop itself, transcripts and prompts."""

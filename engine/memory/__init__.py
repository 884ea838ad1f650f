"""What the agent does with its memory: flush, recall tracking, dreaming, session transcripts."""

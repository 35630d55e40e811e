"""Requirements and their verdicts per rule."""

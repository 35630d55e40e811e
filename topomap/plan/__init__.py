"""The flow's work under each arrangement of cards."""

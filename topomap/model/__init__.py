"""The snapshot and its parts, JSON, schema version, validation, merge; per-device facts."""

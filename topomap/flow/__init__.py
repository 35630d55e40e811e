"""The flow file, its work block, binding hosts to snapshots, mapping arrows onto topologies."""

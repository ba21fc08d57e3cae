"""The gpufleet.netval development lab (not part of the collection; excluded from the galaxy build)."""

"""Tests of qnn_passes: the migrated QNN passes, the pipeline, the lowering API."""

"""The lowering tier: whole lowerings through both flows on the QNN backend double (no QNN)."""

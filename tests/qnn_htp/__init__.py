"""The real-QNN HTP tier: lowerings through the real QNN compiler, run on the real HTP simulator."""

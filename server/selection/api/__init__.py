"""The model-selection REST API: selection, network profiles and their probe, simulations."""

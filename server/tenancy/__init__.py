"""Multi-tenant sharing experiments as jobs: sharing sweeps (issue 21) and what they measured."""

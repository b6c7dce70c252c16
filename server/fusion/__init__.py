"""ParallelFusion experiments as jobs: fusion sweeps and fusion plans, and what they measured."""

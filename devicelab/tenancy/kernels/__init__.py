"""OpenCL C sources of the sharing strategies' kernels (a package so the .cl files ship with it)."""

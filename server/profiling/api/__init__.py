"""The profiling REST API: jobs and their results, and what every experiment job of the API shares."""

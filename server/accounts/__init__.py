"""Teams, their members, and the API tokens people and NAS scripts authenticate with."""

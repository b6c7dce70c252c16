"""The labs' REST API: the staff endpoints (``staff.py``) and the lab machines' own."""

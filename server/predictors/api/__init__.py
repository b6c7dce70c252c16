"""The predictors' REST API: predictors, predictions, and their routes."""

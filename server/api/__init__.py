"""What every app's REST API shares (fields, filters, request bodies, parsers, pagination,
permissions, errors, the OpenAPI schema) and the routes that include each app's ``api/urls.py``."""

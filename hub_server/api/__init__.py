"""HTTP routes: simple API, files, uploads, JSON API."""

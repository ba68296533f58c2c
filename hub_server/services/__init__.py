"""What the Hub does, independent of HTTP: accounts, publishing, the catalog."""

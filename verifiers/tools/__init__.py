"""Tools offered to the model: schemas from Python functions, and carrying out the model's calls."""

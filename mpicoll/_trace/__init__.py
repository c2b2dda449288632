"""Reading flight-recorder dumps: python -m mpicoll trace."""

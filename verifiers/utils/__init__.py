"""Classic ``verifiers.utils.*`` import paths, kept for environments written against them."""

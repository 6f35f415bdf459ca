"""Presentation for the notebooks: widgets, plots and sympy formulas (imported only by notebooks)."""

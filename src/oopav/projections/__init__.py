"""oopav.projections"""

"""oopav.tui"""

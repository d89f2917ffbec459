"""oopav.sandbox"""

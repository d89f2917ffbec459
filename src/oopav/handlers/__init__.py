"""oopav.handlers"""

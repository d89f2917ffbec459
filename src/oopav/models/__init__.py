"""oopav.models"""

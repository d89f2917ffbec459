"""oopav.context"""

"""oopav.bus"""

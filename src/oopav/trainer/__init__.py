"""oopav.trainer"""

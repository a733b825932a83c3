"""Test doubles shared by the whole suite: real local servers, never mocks of our own code."""

"""The spine's own commands, one module per group (registered by ``oopav.cli``)."""

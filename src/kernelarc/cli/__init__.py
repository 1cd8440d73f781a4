"""The `kernelarc` command (typer + rich): thin commands over library calls."""

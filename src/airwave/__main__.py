from airwave.cli import app

app(prog_name="airwave")

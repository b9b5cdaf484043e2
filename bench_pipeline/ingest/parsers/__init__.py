"""One parser per source: the source's own response format → staging frames per live table."""

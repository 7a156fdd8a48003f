"""IR -> IR passes; the pipeline (pipeline.py) is one named list of them."""

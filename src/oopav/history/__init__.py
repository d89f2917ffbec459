"""Reading history across sessions (issue 27): the diff of two runs, a session's fork tree,
content-addressed blobs (starting trees, prompts), session archives, replay of a corpus and
signed history."""

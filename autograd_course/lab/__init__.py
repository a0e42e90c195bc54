"""What a learner's JupyterLab uses and a graded kernel never sees: the lessons' tools
(cost, engine pictures, training, extending, functional) and the self-check."""

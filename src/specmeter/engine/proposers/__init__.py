"""What proposes the draft tokens: the Proposer interface (``proposer``), the model-free methods (``ngram``,
``suffix``), the EAGLE head (``eagle``) and a candidate's name turned into its proposer (``candidate``).
docs/methods.md describes each; the decode loops in ``engine.speculative`` and ``engine.batched`` run them."""

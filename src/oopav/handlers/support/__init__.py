"""What the loop handlers do to the world, through their ports (Temporal would call these
activities): run the gates and checks in the sandbox, probe the project's environment, grade
candidate actions and plans, call models under the prompt contract, roll a workspace back, end
a session, validate a submission. Decisions about what the results mean are pure and live in
``oopav.decide``; a handler module reads as: load state, call these and the deciders, emit."""

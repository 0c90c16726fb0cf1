"""Events and reminders: personal dates, their reminder plans, and the delivery engine `fermix jobs run` drives."""

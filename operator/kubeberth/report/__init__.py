"""Renderings of simulate's results and of explanations, read from the documented JSON structure
(whatif/outcomes.py's outcomes, scheduler/explain.py's Explanation.to_dict) only: text, the operator's
summary and Event, the HTML report. Imports nothing else of kubeberth."""

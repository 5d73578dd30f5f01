"""Month-end cost forecasts with prediction intervals.

model.py   PURE, vectorised (numpy): daily series -> month-end total, 80 % / 95 % intervals
store.py   edge: warehouse series per team / service / account -> model -> cost_forecasts
"""

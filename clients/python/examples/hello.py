"""A robot in ten lines: alpha drives a circle, greets gamma (crsim's own behaviour network) over
the radio every second, and prints what it hears. Start crsim first, the app or headless:
    crsim scenes/programs.ron            or    crsim run scenes/programs.ron --steps 3000
then: python3 clients/python/examples/hello.py [PORT]"""
import sys

from crsim import Client

client = Client(port=int(sys.argv[1]) if len(sys.argv) > 1 else 9400)
client.register("alpha")
for step in client.steps():
    client.drive("alpha", 0.2, 0.5)  # m/s and rad/s: a circle
    if step.step % 50 == 0:
        client.send_message("alpha", "gamma", {"hello": step.step})
    for m in client.get_messages("alpha"):
        print(step.step, "alpha hears", m["from"], m["content"])

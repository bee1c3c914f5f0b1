"""What a second library's train step moves and the device memory it takes,
as fractions of a first's: two `lruc-gpu-plan` outputs at one batch."""
import sys


def figures(path):
    moved = memory = None
    for line in open(path):
        if line.startswith("train_step"):
            moved = float(line.split()[8])  # total GB
        if line.startswith("device memory of a train step:"):
            memory = float(line.split()[6])  # GiB
    return moved, memory


first, second = figures(sys.argv[1]), figures(sys.argv[2])
print(f"moved {second[0] / first[0]:.2f}, "
      f"device memory {second[1] / first[1]:.2f}")

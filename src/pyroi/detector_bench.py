"""torchvision's Mask R-CNN / Faster R-CNN on the CPU, as built and converted by
pyroi.torch.convert: time in the RoI pooling modules (hooks), whole eval forward, whole
train step (forward + backward), and RoI pooling's share, at each thread count.

    pyroi bench --model maskrcnn -t 1 -t 2 --repeat 5
    python bench/detector.py --model maskrcnn --threads 1 2 --repeat 5

Models have random weights from a fixed seed (nothing is downloaded). RoI pooling time is
measured with hooks in the same runs as the totals: module forward pre/post hooks for the
forward, and autograd-node pre/post hooks on every backward node between a pooler's output
and its input feature maps for the backward. Each hook reads the wall clock and the process
CPU time (all threads: on a shared machine CPU time depends far less on the load than wall
time; at 1 thread it is the pooling's own work). Original and converted model alternate
within each repetition (both see the same machine load); the table gives medians, and the
load average before and after.

Importing this module imports torch and torchvision (``pyroi bench --model`` does, on use).
"""

# May import: the package (pyroi, pyroi.torch), and torch, torchvision.

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import subprocess
import time

import torch
import torchvision

import pyroi
import pyroi.torch

MODELS = {"maskrcnn": "maskrcnn_resnet50_fpn", "fasterrcnn": "fasterrcnn_resnet50_fpn"}


class PoolingTimer:
    """Seconds spent in a model's RoI pooling modules (forward, and backward in training)."""

    def __init__(self, model):
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # process CPU time: less sensitive to a shared machine's load
        heads = model.roi_heads
        self.modules = [m for m in (heads.box_roi_pool, getattr(heads, "mask_roi_pool", None))
                        if m is not None]
        for module in self.modules:
            module.register_forward_pre_hook(self._start)
            module.register_forward_hook(self._stop)
        self._started = (0.0, 0.0)

    @staticmethod
    def _now():
        return time.perf_counter(), time.process_time()

    def _start(self, module, args):
        self._started = self._now()

    def _stop(self, module, args, output):
        self._add([self._started])
        if output.grad_fn is not None:
            features = [v for v in args[0].values() if isinstance(v, torch.Tensor)]
            self._time_backward(output, features)

    def _time_backward(self, output, features):
        """Hook every autograd node from ``output`` back to (not including) the features'."""
        stop = {f.grad_fn for f in features if f.grad_fn is not None}
        nodes, pending = [], [output.grad_fn]
        seen = set()
        while pending:
            node = pending.pop()
            if (node is None or node in stop or node in seen
                    or type(node).__name__ == "AccumulateGrad"):
                continue
            seen.add(node)
            nodes.append(node)
            pending.extend(next_node for next_node, _ in node.next_functions)
        for node in nodes:
            started = []
            node.register_prehook(lambda grads, started=started: started.append(self._now()))
            node.register_hook(lambda inputs, grads, started=started: self._add(started))

    def _add(self, started):
        (wall, cpu), (wall_now, cpu_now) = started.pop(), self._now()
        self.seconds += wall_now - wall
        self.cpu_seconds += cpu_now - cpu


def build(name, size):
    torch.manual_seed(0)
    model = getattr(torchvision.models.detection, MODELS[name])(
        weights=None, weights_backbone=None, min_size=size, max_size=size)
    return model, pyroi.torch.convert(copy.deepcopy(model))


def batch(size, count, masks):
    generator = torch.Generator().manual_seed(1)
    shapes = [(size, size - 32 * (i % 2)) for i in range(count)]
    images = [torch.rand((3, h, w), generator=generator) for h, w in shapes]
    targets = []
    for h, w in shapes:
        corners = torch.rand((8, 2, 2), generator=generator) * torch.tensor([w, h])
        boxes = torch.cat([corners.min(1).values, corners.max(1).values + 8], dim=1)
        target = {"boxes": boxes, "labels": torch.randint(1, 91, (8,), generator=generator)}
        if masks:
            mask = torch.zeros((8, h, w), dtype=torch.uint8)
            for k, (x1, y1, x2, y2) in enumerate(boxes.long().tolist()):
                mask[k, y1:y2, x1:x2] = 1
            target["masks"] = mask
        targets.append(target)
    return images, targets


def eval_forward(model, timer, images):
    model.eval()
    timer.seconds = timer.cpu_seconds = 0.0
    started = time.perf_counter()
    with torch.no_grad():
        model(images)
    return time.perf_counter() - started, timer.seconds, timer.cpu_seconds


def train_step(model, timer, images, targets):
    model.train()
    model.zero_grad(set_to_none=True)
    timer.seconds = timer.cpu_seconds = 0.0
    torch.manual_seed(2)
    started = time.perf_counter()
    losses = model(images, targets)
    sum(losses.values()).backward()
    return time.perf_counter() - started, timer.seconds, timer.cpu_seconds


def cpu_model() -> str:
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def load_average() -> str:
    try:
        return " ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def run(model_name="maskrcnn", size=512, batch_size=2, thread_counts=(1, 2), repeat=5):
    """Print the table (Markdown) for ``model_name`` at each thread count; returns 0."""
    original, converted = build(model_name, size)
    timers = {"torchvision": PoolingTimer(original), "pyroi": PoolingTimer(converted)}
    models = {"torchvision": original, "pyroi": converted}
    images, targets = batch(size, batch_size, model_name == "maskrcnn")
    print(f"{MODELS[model_name]}, batch {batch_size}, {size} px images; CPU: {cpu_model()}; "
          f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"pyroi {pyroi.__version__}; medians of {repeat} runs; load average (1, 5, 15 min) "
          f"before: {load_average()}", flush=True)
    header = ("| threads | step | RoI pooling torchvision: wall, CPU | pyroi: wall, CPU | "
              "speed-up wall | speed-up CPU | whole torchvision | whole pyroi | ratio | "
              "pooling share before | after |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for threads in thread_counts:
        torch.set_num_threads(threads)
        for name in models:  # warm up: first-call initialisation, inferred pooler scales
            eval_forward(models[name], timers[name], images)
        runs = {(step, name): [] for step in ("eval forward", "train step") for name in models}
        for _ in range(repeat):
            for name in models:
                runs["eval forward", name].append(eval_forward(models[name], timers[name],
                                                               images))
                runs["train step", name].append(train_step(models[name], timers[name], images,
                                                           targets))
        for step in ("eval forward", "train step"):
            whole = {n: statistics.median(r[0] for r in runs[step, n]) for n in models}
            pooled = {n: statistics.median(r[1] for r in runs[step, n]) for n in models}
            cpu = {n: statistics.median(r[2] for r in runs[step, n]) for n in models}
            shares = {n: statistics.median(r[1] / r[0] for r in runs[step, n]) for n in models}
            print(f"| {threads} | {step} | {pooled['torchvision']:.3f} s, "
                  f"{cpu['torchvision']:.3f} s | {pooled['pyroi']:.3f} s, {cpu['pyroi']:.3f} s | "
                  f"{pooled['torchvision'] / pooled['pyroi']:.1f}x | "
                  f"{cpu['torchvision'] / cpu['pyroi']:.1f}x | "
                  f"{whole['torchvision']:.2f} s | {whole['pyroi']:.2f} s | "
                  f"{whole['torchvision'] / whole['pyroi']:.2f}x | "
                  f"{100 * shares['torchvision']:.0f} % | {100 * shares['pyroi']:.0f} % |",
                  flush=True)
    print(f"load average after: {load_average()}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="maskrcnn")
    parser.add_argument("--size", type=int, default=512, help="image side in pixels")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    return run(args.model, args.size, args.batch, args.threads, args.repeat)

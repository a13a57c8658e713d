"""The field guide's train.py, as small as a batch example needs: reads its parameters (``--model``, ``--steps``)
and the batch's input folder, writes ``result.json`` into its task's folder (``XUANWU_OUTPUT_DIR``)."""
import json
import os
import sys

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
with open(os.path.join(os.environ['XUANWU_INPUT_DIR'], 'data.txt'), encoding='utf-8') as handle:
    data = handle.read().split()
result = {'task_id': os.environ['XUANWU_TASK_ID'], 'model': args.get('--model'), 'steps': int(args.get('--steps', 0)),
          'words_read': len(data)}
with open(os.path.join(os.environ['XUANWU_OUTPUT_DIR'], 'result.json'), 'w', encoding='utf-8') as handle:
    json.dump(result, handle)
print('trained', result['model'], result['steps'])

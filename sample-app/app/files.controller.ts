import { BadRequestException, Body, Controller, Get, NotFoundException, Param, Put } from '@nestjs/common';
import type { ContainerClient } from '@azure/storage-blob';
import { InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';

/** Files in and out of blob storage, on shared `ContainerClient`s. */
@Controller('files')
export class FilesController {
  constructor(@InjectPool('blob') private readonly blob: ConnectionPool<ContainerClient>) {}

  @Put(':name')
  @UsePooled('blob')
  async put(@Param('name') name: string, @Body() body: { content?: unknown }) {
    if (typeof body?.content !== 'string') throw new BadRequestException('send JSON: { "content": "some text" }');
    const bytes = Buffer.byteLength(body.content);
    await this.blob.current.getBlockBlobClient(name).upload(body.content, bytes);
    return { name, bytes };
  }

  @Get(':name')
  @UsePooled('blob')
  async get(@Param('name') name: string) {
    try {
      // One GET: downloadToBuffer() asks the size first and fails when a PUT in between changed it.
      const res = await this.blob.current.getBlobClient(name).download();
      return { name, content: await text(res.readableStreamBody) };
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) throw new NotFoundException(`no file named ${name}`);
      throw err;
    }
  }

  @Get()
  @UsePooled('blob')
  async list() {
    const names: string[] = [];
    for await (const blob of this.blob.current.listBlobsFlat()) names.push(blob.name);
    return { files: names };
  }
}

/** The whole body of a download, as text. */
async function text(body: NodeJS.ReadableStream | undefined): Promise<string> {
  if (body === undefined) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString();
}

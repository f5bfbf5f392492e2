from safeport.shared.schemas.export import write_schemas

for path in write_schemas():
    print(path.name)
